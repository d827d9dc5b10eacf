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
 * cache type).
 * Quantized storage (`quant`, either layout; kernels/quant/kvquant.h): each head vector of a row is
 * encoded on its own (from its values and, with `center`, the fixed key center; never from other
 * rows) —
 *   STENO_KV_Q_AFFINE  keys and values as MLX affine groups (mlx-lm QuantizedKVCache: `group`
 *                      32/64, k_bits = v_bits = 4 or 8, uint32-packed codes, f16 scale and bias;
 *                      rotate = center = sink = 0 and group 64 is exactly mlx-lm's cache);
 *   STENO_KV_Q_TURBO   TurboQuant (arXiv 2504.19874; the seed's turboquant-codec.ts): keys asymmetric
 *                      affine per vector with k_bits 4/8, values rotated (Walsh–Hadamard, random
 *                      signs) and Lloyd-Max coded with v_bits 2/3/4.
 * The cache first holds rows of `dtype`; at the first update that begins with offset >= quant_start
 * it converts every held row once and quantizes every later row (mlx-lm's quantized_kv_start /
 * to_quantized; 0 = quantized from the first token). A row is always encoded from its `dtype`-rounded
 * values, so (without `center`) a converted row and a row quantized on arrival are byte-identical: trim(n) followed by
 * the same tokens restores exactly the same bytes, for both layouts and across a ring wrap. A trim
 * below quant_start leaves the cache quantized (as mlx-lm: there is no way back to the dtype rows);
 * reset() returns it to `dtype` rows. Views then carry kq/vq (the per-head formats) and attention
 * reads the packed rows (kernels/attention/attention_kvquant.c).
 * Attention sinks (`sink` > 0, quantized caches only): the keys and values of positions
 * 0..sink-1 are kept beside their codes as float rows (dtype-rounded; TurboQuant values in the
 * rotated domain), and attention reads those instead of the codes. The first tokens draw a large
 * share of every query's attention (StreamingLLM, Xiao et al. 2023, arXiv 2309.17453) and their
 * vectors carry outlier channels that stretch a quantization group; KVQuant (Hooper et al. 2024,
 * arXiv 2401.18079) keeps the first token in fp16 for that reason. The rows are written whenever
 * such a position is stored, so trim/re-add and the conversion stay exact; cost: sink × 2 ×
 * n_kv_heads × head_dim floats per layer, not per token.
 * Rotation (`rotate`, quantized caches): keys, and AFFINE values, are encoded rotated (kvquant.h,
 * rotate = 1; TurboQuant values always are); attention rotates the queries and un-rotates its output.
 * Key centering (`center`, quantized caches): the first time keys at positions >= sink are stored
 * quantized (at the conversion: the held rows; else the first such update), their mean per KV head
 * becomes the key center c, kept until reset; keys at positions >= sink are then encoded as k − c
 * (sinks keep raw keys) and attention adds q·c to their scores. Keys share a large per-channel mean
 * (KIVI, arXiv 2402.02750) that would otherwise widen every row's range. c never changes while
 * tokens are trimmed and re-added, so rollback stays byte-exact; a converted cache and one quantized
 * from the first token take their centers from different tokens, so their rows differ.
 * Errors: STENO_E_NOMEM (growth), STENO_E_INVALID_ARG (trim beyond what is held, bad params).
 */
#ifndef STENO_LLM_KVCACHE_H
#define STENO_LLM_KVCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/attention/attention.h"
#include "kernels/quant/kvquant.h"
#include "steno.h"

enum { STENO_KV_PLAIN = 0, STENO_KV_ROTATING = 1 };
enum { STENO_KV_Q_NONE = 0, STENO_KV_Q_AFFINE = 1, STENO_KV_Q_TURBO = 2 };

/* steno_kv_view (what attention reads) and steno_kv_visible are defined in kernels/attention/attention.h. */

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
    int quant;         /* STENO_KV_Q_NONE, STENO_KV_Q_AFFINE or STENO_KV_Q_TURBO */
    int k_bits, v_bits;/* AFFINE: both 4 or 8; TURBO: keys 4 or 8, values 2, 3 or 4 */
    int group;         /* AFFINE: group size (32 or 64; any multiple of 8 dividing head_dim) */
    int quant_start;   /* quantize once an update begins with this many tokens cached (0: at once) */
    int sink;          /* quantized: positions 0..sink-1 also kept as float rows (attention sinks) */
    int rotate;        /* quantized: keys (and AFFINE values) rotated by steno_tq_rotate before encoding */
    int center;        /* quantized: keys encoded as k − c, c the mean key of the first quantized tokens */
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
    /** Replaces the contents by n_rows rows (positions pos[i], raw rows k/v in the storage format
     *  that `quantized` names) with `offset` tokens processed; ring: the snapshot's ring slots
     *  (rotating: the cache takes that ring size). Used by steno_kv_restore. */
    steno_status (*load)(steno_kv_cache *c, int offset, int quantized, int n_rows, int ring, const int32_t *pos,
                         const uint8_t *k, const uint8_t *v);
} steno_kv_ops;

/** Common header of every cache kind (implementations embed it first). */
struct steno_kv_cache {
    const steno_kv_ops *ops;
    steno_kv_params p;
    int quantized;            /* rows are quantized now (after the conversion) */
    steno_kvq_fmt kf, vf;     /* per-head formats of key and value rows when p.quant != NONE */
    float *sink_k, *sink_v;   /* [p.sink][n_kv_heads × head_dim] when p.quant != NONE and p.sink > 0 */
    float *k_center;          /* [n_kv_heads × head_dim_k] when p.quant != NONE and p.center */
    int center_set;           /* k_center holds the key center (keys >= sink are encoded centered) */
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

/** Bytes per token of a cache with these params once quantized (= dtype rows when quant is NONE);
 *  0 when the params are invalid. */
size_t steno_kv_quant_bytes_per_token(const steno_kv_params *p);
/** 1 when the cache's rows are quantized now. */
int steno_kv_is_quantized(const steno_kv_cache *c);

/** Snapshots (the prompt cache's entries, kvcache_snapshot.c): the cache's whole state — offset,
 *  the held rows in their storage format (dtype or quantized codes), the key center and the
 *  attention sinks' float rows — as one byte string. steno_kv_snapshot(c, NULL) returns its size;
 *  steno_kv_snapshot(c, dst) writes that many bytes. steno_kv_restore replaces the contents of a
 *  cache made with the same params by a snapshot: afterwards every update, trim and attention
 *  gives the same bytes as on the cache the snapshot was taken from (a rotating cache takes the
 *  source's ring size). A rotating snapshot holds the ring — the window plus the reserve — so it
 *  resumes at its offset and rolls back exactly as far as its source could. Errors: STENO_E_FORMAT (the bytes do not describe a cache of these
 *  params: kind, geometry, storage format, sizes, positions), STENO_E_NOMEM; the cache is reset
 *  then. Not thread-safe (one cache, one thread). */
size_t steno_kv_snapshot(const steno_kv_cache *c, uint8_t *dst);
steno_status steno_kv_restore(steno_kv_cache *c, const uint8_t *src, size_t n);
/** Empties the cache and frees its storage down to what a new cache holds (a rotating cache keeps
 *  its base ring of max_size − keep + reserve slots). STENO_E_NOMEM leaves it reset. */
steno_status steno_kv_release(steno_kv_cache *c);
/** Bytes a cache of these params allocates once it holds n tokens, fed in updates of at most
 *  max_update tokens (plain: n rounded up to the growth step; rotating: the ring, whatever n). */
size_t steno_kv_bytes_at(const steno_kv_params *p, int n, int max_update);

/** The fewest tokens trim can bring the cache back to (0 for plain caches; rotating ones: how far
 *  the ring's history reaches). */
int steno_kv_min_offset(const steno_kv_cache *c);

/** Attention mask of the T queries at positions q0..q0+T-1 over view's slots:
 *  mask[t * n_slots + s] = 0 (visible) or -INFINITY. mask holds T × view->n_slots floats. */
void steno_kv_make_mask(const steno_kv_view *view, int q0, int T, float *mask);

#endif
