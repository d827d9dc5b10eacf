/* attention.h — scaled dot-product attention of T new queries over a KV-cache view (GQA).
 *
 * For query t (absolute position q0 + t) and head h (KV head h / (n_head / n_kv_head)):
 *   s_j = (q · k_j) · scale        over the view's slots j visible to the query (llm/kvcache.h),
 *                                   visited in temporal order
 *   p   = softmax(s)
 *   out = Σ_j p_j v_j
 * q: float32 [T][n_head · head_dim_k]; out: float32 [T][n_head · head_dim_v].
 * The key dot product converts q to the key type's vec_dot_type and calls that type's kernel
 * (kernels/quant/quant.h): float keys give a sequential float dot (llama2.c run.c), f16 keys round q to
 * f16 as ggml's mul_mat(k, q) does; quantized key types would plug in the same way.
 * Numerics, selectable per model family:
 *   ggml (llama.cpp's CPU soft_max + mul_mat): sum of exponentials in double, p = e · (1/sum),
 *     and with f16 values p rounded to f16 before weighting (ggml converts kq to f16). With an f16
 *     cache on AVX2 this path is bit-identical to llama.cpp (kernels/ops/ggml_simd.h: ggml's f16 dot
 *     order, ggml_v_expf over 8-position chunks, value products in lane position % 32);
 *   llama2c (run.c): s = dot / scale_div, float sum, p = e / sum.
 * Work is split over (t, h) pairs; each output element is computed by one thread in a fixed order.
 */
#ifndef STENO_KERNELS_ATTENTION_H
#define STENO_KERNELS_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/gemm/matmul.h"
#include "core/threadpool.h"

/** What attention reads: a KV cache's slots after an update (llm/kvcache.h). Pointers stay valid
 *  until the cache's next update/trim/reset. */
typedef struct steno_kv_view {
    int dtype;              /* element type of the k and v rows (kernels/quant/quant.h STENO_T_*) */
    int n_slots;            /* slots that may hold a token */
    const int32_t *pos;     /* [n_slots] absolute position in each slot, -1 = empty */
    const int32_t *order;   /* [n_order] slots holding valid tokens, by increasing position */
    int n_order;
    const uint8_t *k, *v;   /* [n_slots] rows */
    size_t k_row_bytes, v_row_bytes;
    int window;             /* <= 0: unlimited (plain) */
    int keep;
    /* quantized caches (kernels/quant/kvquant.h): the per-head formats of the k and v rows, else NULL
     * (then dtype applies) */
    const struct steno_kvq_fmt *kq, *vq;
    /* quantized caches: positions < n_sink are read from these float rows instead of the codes
     * ([n_sink][n_kv_head × head_dim]; values in TurboQuant's rotated domain); n_sink 0: none */
    int n_sink;
    const float *sink_k, *sink_v;
    /* quantized caches with centered keys: the codes of a key at position >= n_sink encode k − c,
     * c = k_center [n_kv_head × head_dim_k] (original domain), so q·k = q·dec + q·c; NULL: none */
    const float *k_center;
} steno_kv_view;

/** 1 if a key at position p is visible to the query at position q under view's rule. */
static inline int steno_kv_visible(const steno_kv_view *v, int p, int q) {
    if (p < 0 || p > q) return 0;
    if (v->window <= 0 || p < v->keep) return 1;
    return q - p < v->window - v->keep;
}


typedef struct steno_attn_params {
    int n_head, n_kv_head, head_dim_k, head_dim_v;
    float scale;       /* ggml numerics: multiplies q·k */
    float scale_div;   /* llama2c numerics: divides q·k (sqrtf(head_size)) */
    int llama2c;       /* 1: llama2c numerics, 0: ggml numerics */
    int fast;          /* 1: the fast path's float32 attention where it applies (steno_attention_fast) */
    float softcap;     /* > 0: scores become softcap·tanh(score/softcap) before the softmax (Gemma 2's
                          attn_logit_softcapping; ggml numerics, plain caches only); 0: none */
} steno_attn_params;

/** The LLM fast path's attention (attention_fast.c; Lab numerics, gated by tests/unit/test_llm_fast.c):
 *  ggml numerics' scores (q·scale)·k, softmax and Σ p·v all in float32 over an f16 or f32 view, the
 *  keys of each query cut at absolute positions into chunks of 128 that threads share (decode at
 *  long contexts), combined in position order. A query's output is bit-identical whatever the thread
 *  count, the other queries evaluated with it and the view's other slots. Same contract as
 *  steno_attention; returns 1 (nothing done) where it does not apply: llama2c numerics, quantized
 *  views, other dtypes, head_dim_k % 8 or head_dim_v % 16 not 0, or a CPU without AVX2+FMA+F16C. */
int steno_attention_fast(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T,
                         int q0, const steno_kv_view *kv, float *out);

/** Attention over a view whose rows are quantized (kv->kq and kv->vq set; attention_kvquant.c). Same
 *  contract as steno_attention; called by it. */
int steno_attention_quant(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T,
                          int q0, const steno_kv_view *kv, float *out);

/** Returns 0, or -1 when out of memory or the view's dtype has no kernel. */
int steno_attention(steno_pool *pool, steno_work *work, const steno_attn_params *ap, const float *q, int T, int q0,
                    const steno_kv_view *kv, float *out);

#endif
