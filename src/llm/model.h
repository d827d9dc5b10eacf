/* model.h — the LLM model: configuration (hyper-parameters read from the file), weights (views
 * into the mmap'd file), tokenizer; and the context that runs it (KV caches, scratch, threads).
 *
 * Llama family (llama.cpp src/models/llama.cpp; llama2.c run.c forward()):
 *   x = embed(token)
 *   per layer: h = RMSNorm(x)·w_attn_norm; q,k,v = h·Wq, h·Wk, h·Wv; RoPE(q, k) with the file's base
 *              (adjacent pairs); attention over the cache (GQA); x += attn·Wo;
 *              h = RMSNorm(x)·w_ffn_norm; x += (silu(h·Wgate) ⊙ h·Wup)·Wdown        (SwiGLU)
 *   logits = RMSNorm(x)·w_out_norm · Wout  (Wout = the token embedding when tied)
 * Gemma 3 (llama.cpp src/models/gemma3.cpp):
 *   x = embed(token) · sqrt(n_embd)
 *   per layer: h = RMSNorm(x)·w; q,k,v = h·W; q,k = RMSNorm per head (QK-norm); RoPE (halves,
 *              base rope.freq_base on global layers, freq_base_swa = 10000 on sliding-window
 *              layers); q ·= 1/sqrt(head_dim); attention (sliding-window layers see the last
 *              n_swa positions); x += RMSNorm(attn·Wo)·w_post_attn;
 *              h = RMSNorm(x)·w_ffn; x += RMSNorm((gelu(h·Wgate) ⊙ h·Wup)·Wdown)·w_post_ffw (GeGLU)
 *   logits = RMSNorm(x)·w · Wembᵀ (tied), optional final soft-capping
 *   Layer i is sliding-window unless i % pattern == pattern - 1 (pattern 6,
 *   `gemma3.attention.sliding_window_pattern` when present).
 * Norm weights are used as stored: the GGUF converter already folded Gemma's (1 + w).
 */
#ifndef STENO_LLM_MODEL_H
#define STENO_LLM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/gemm/matmul.h"
#include "kernels/gemm/matmul_x8.h"
#include "core/threadpool.h"
#include "llm/kvcache.h"
#include "steno_llm.h"

struct gguf_file;
struct llama2c_file;
struct steno_vocab;

typedef enum { LLM_ARCH_LLAMA = 0, LLM_ARCH_GEMMA3 = 1 } llm_arch;

typedef struct llm_hparams {
    llm_arch arch;
    int llama2c;          /* 1: llama2.c checkpoint, run.c numerics; 0: GGUF, ggml numerics */
    int n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim_k, head_dim_v, n_ff;
    float norm_eps;
    int n_rot;            /* rotary dims per head */
    int rope_neox;        /* 0: adjacent pairs; 1: halves */
    float rope_base, rope_base_swa, rope_freq_scale;
    int n_swa;            /* sliding window (0: none) */
    uint8_t *is_swa;      /* [n_layer] */
    float q_scale;        /* Gemma: q ·= q_scale before attention (attention scale 1) */
    float kq_scale;       /* Llama: softmax scale 1/sqrt(head_dim) */
    float embd_scale;     /* Gemma: sqrt(n_embd); Llama: 1 */
    float logit_softcap;  /* 0: none */
} llm_hparams;

typedef struct llm_layer {
    const float *attn_norm, *ffn_norm;          /* [n_embd] */
    const float *q_norm, *k_norm;               /* [head_dim_k] (Gemma 3) */
    const float *post_attn_norm, *post_ffn_norm; /* [n_embd] (Gemma 3) */
    steno_mat wq, wk, wv, wo, ffn_gate, ffn_up, ffn_down;
} llm_layer;

struct steno_llm {
    llm_hparams hp;
    steno_mat tok_embd;   /* [n_vocab rows][n_embd] */
    steno_mat output;     /* [n_vocab rows][n_embd]; == tok_embd when tied */
    const float *output_norm;
    llm_layer *layers;
    float **owned;        /* norm vectors converted to float32 */
    int n_owned;
    struct gguf_file *gguf;
    struct llama2c_file *l2c;
    struct steno_vocab *vocab;
    char *path, *name, *chat_template;
    /* chat_template compiled once at load and rendered by every request (text/jinja/jinja.h); NULL
     * when there is none or it does not compile (steno_chat_apply then reports the error) */
    struct steno_jinja_template *chat_jinja;
    size_t weight_bytes;
    struct llm_fast *fast; /* the x8 copies of the fast path (llm_fast_prepare), or NULL */
};

struct steno_llm_ctx {
    const steno_llm *m;
    steno_llm_ctx_params p;
    steno_pool *pool;
    int pool_borrowed; /* a drafter's context runs on its target's pool (never concurrently) */
    steno_work work, attn_work;
    /* llm_attend_groups' rows attended side by side: one scratch per pool task, the groups' views
     * and which of them are small (grown on demand, kept between passes) */
    steno_work *row_work;
    int n_row_work;
    steno_kv_view *row_view;
    int *row_small;
    int row_cap;
    steno_work batch_work; /* steno_llm_eval_batch's packing and logits, kept between passes */
    steno_kv_cache **kv; /* [n_layer] */
    int n_past;
    int n_batch;
    /* debugging hook (parity work): called with a tensor's name ("attn_out"), layer and T rows */
    void (*dump)(void *user, const char *name, int layer, const float *data, int rows, int cols);
    void *dump_user;
    /* scratch, n_batch rows each */
    float *x, *xb, *xb2, *q, *k, *v, *att, *hb, *hb2;
    int *pos; /* the absolute position of each packed row */
};

/** One sequence of a packed forward pass (the seeds' token groups): its context g->ctx (whose KV
 *  caches and position it advances) and its T tokens at rows [t0, t0 + T) of the packed batch. */
typedef struct llm_group {
    steno_llm_ctx *ctx;
    int t0, T;
} llm_group;

/** One forward pass of T <= c->n_batch packed tokens, the rows of ng groups (per architecture:
 *  models/llama.c, models/gemma3.c). c is the executor: its scratch, pool and work buffers; the groups'
 *  contexts only lend their caches (c may be one of them). Token-wise work (norms, projections,
 *  MLP) runs on all T rows at once, so each weight is read once per pass; RoPE uses each row's own
 *  position and attention runs per group over its own cache. Every output row is computed by the
 *  same kernel calls whatever the other rows, so a group's result does not depend on its company.
 *  Leaves the final hidden states in c->x; advances each group's n_past by its T on success. On
 *  failure the caller rolls the groups' caches back. */
steno_status llm_forward_llama(steno_llm_ctx *c, const int *tokens, int T, const llm_group *g, int ng);
steno_status llm_forward_gemma3(steno_llm_ctx *c, const int *tokens, int T, const llm_group *g, int ng);

/** Layer l's attention for every group: stores the group's rows of k and v ([T][n_kv_heads ·
 *  head_dim]) in its context's cache and attends its rows of q over that cache into att
 *  ([T][n_head · head_dim_v]), at the positions in c->pos. STENO_OK, or the cache's error, or
 *  STENO_E_NOMEM. */
steno_status llm_attend_groups(steno_llm_ctx *c, const llm_group *g, int ng, int l, const steno_attn_params *ap,
                               const float *q, const float *k, const float *v, float *att);

/** Fills c->pos for the groups' rows (their contexts' n_past onwards). */
void llm_group_positions(steno_llm_ctx *c, const llm_group *g, int ng);

/** Y = X · Wᵀ in the context's compute mode (steno_matmul, steno_matmul_f32, or the fast path's
 *  steno_matmul_x where W has an x8 copy); 0 or -1 (NOMEM). */
static inline int llm_matmul(steno_llm_ctx *c, const steno_mat *W, const float *X, int T, float *Y, int64_t ldy) {
    if (c->p.compute == STENO_LLM_COMPUTE_FAST && W->x8) return steno_matmul_x(c->pool, &c->work, W->x8, X, T, Y, ldy);
    return c->p.compute == STENO_LLM_COMPUTE_F32 ? steno_matmul_f32(c->pool, &c->work, W, X, T, Y, ldy)
                                                 : steno_matmul(c->pool, &c->work, W, X, T, Y, ldy);
}

/** Builds the x8 copies of m's q4_0/q4_1/q8_0/q6_K matrices (and those STENO_FAST_TYPES names) once (the first FAST context; thread-safe:
 *  a mutex, later calls return at once). 0, or -1 when out of memory (nothing half-built is used). */
int llm_fast_prepare(const steno_llm *m);
/** Frees them (steno_llm_free). */
void llm_fast_free(steno_llm *m);

/** Y_m = X · W_mᵀ for nm matrices over the same activations (a layer's Q/K/V, or gate and up):
 *  in the llama.cpp arithmetic, matrices of one type share one activation conversion and one pool
 *  job (steno_matmul_n; bit-identical to separate calls). 0 or -1 (NOMEM). */
int llm_matmul_n(steno_llm_ctx *c, int nm, const steno_mat *const *W, const float *X, int T, float *const *Y,
                 const int64_t *ldy);

/** llm_matmul_n with pre (kernels/gemm/matmul_x8.h; NULL: none) run on every row of X first: inside the fast
 *  path's conversion when W[0] has an x8 copy in FAST mode (in parallel, per row), else on the
 *  caller before the products. The same bits either way. 0 or -1 (NOMEM). */
int llm_matmul_n_pre(steno_llm_ctx *c, const steno_xmat_pre *pre, int nm, const steno_mat *const *W, const float *X,
                     int T, float *const *Y, const int64_t *ldy);

/** The gated unit of the MLP row by row, as a prologue of the down projection: row t of hb
 *  ([T][F]) becomes fn(gate = hb row t, up = hb2 row t) (SwiGLU or GeGLU, element-wise). */
typedef struct {
    float *hb;
    const float *hb2;
    int F;
    void (*fn)(float *h, const float *g, const float *u, int n);
} llm_glu_rows;
void llm_pre_glu(void *arg, int t);

/** The MLP's down projection Y = glu(hb, hb2) · Wᵀ ([T][ldy]): the gated unit inside the product's
 *  conversion when fuse, else whole on the caller first and dumped as `name` (llm_dump). 0 or -1
 *  (NOMEM). */
int llm_glu_down(steno_llm_ctx *c, const llm_glu_rows *glu, int fuse, const char *name, int layer, const steno_mat *W,
                 int T, float *Y, int64_t ldy);

/** Fills kp's quantization fields from the context params (context.c). */
void llm_kv_quant_params(const steno_llm_ctx_params *p, steno_kv_params *kp);

/** Calls c->dump when set (see above). */
static inline void llm_dump(const steno_llm_ctx *c, const char *name, int layer, const float *data, int rows, int cols) {
    if (c->dump) c->dump(c->dump_user, name, layer, data, rows, cols);
}

/** Shared by the forwards: final norm + output projection of nr rows of c->x into logits
 *  ([nr][n_vocab]): rows r0..r0+nr-1, or rows[0..nr-1] when rows is not NULL. */
steno_status llm_output(steno_llm_ctx *c, int r0, const int *rows, int nr, float *logits);

#endif
