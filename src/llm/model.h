/* model.h — the LLM model: configuration (hyper-parameters read from the file), weights (views
 * into the mmap'd file), tokenizer; and the context that runs it (KV caches, scratch, threads).
 *
 * Which forward runs a file is its architecture's row in the registry (llm/arch.h,
 * src/llm/models/registry.c); each forward is written in its paper's order in its own file:
 *   models/decoder.c  the pre-norm (or post-norm) dense decoder with its options — Llama and the
 *                     families that differ from it by a bias, a norm, a scale or a RoPE pattern
 *                     (qwen2, qwen3, granite, olmo2, smollm3, the generic tier):
 *     x = embed(token) · embd_scale
 *     per layer: h = RMSNorm(x)·w_attn_norm (none in OLMo 2); q,k,v = h·W (+ biases);
 *                q,k = RMSNorm(q,k)·w (QK-norm per head or over the projection, when present);
 *                RoPE(q, k) (pairs or halves, frequencies / rope_freqs factors; skipped on the
 *                layers no_rope marks); attention over the cache (GQA, kq_scale);
 *                a = attn·Wo (+ bias), then RMSNorm(a)·w_post_attn when present;
 *                x += a · residual_scale;
 *                h = RMSNorm(x)·w_ffn (none in OLMo 2); m = (silu(h·Wgate) ⊙ h·Wup)·Wdown;
 *                m = RMSNorm(m)·w_post_ffw when present; x += m · residual_scale
 *     logits = RMSNorm(x)·w_out_norm · Wout · logit_scale  (Wout = the embedding when tied)
 *   models/gemma3.c   Gemma 3 (llama.cpp src/models/gemma3.cpp):
 *     x = embed(token) · sqrt(n_embd)
 *     per layer: h = RMSNorm(x)·w; q,k,v = h·W; q,k = RMSNorm per head (QK-norm); RoPE (halves,
 *                base rope.freq_base on global layers, freq_base_swa = 10000 on sliding-window
 *                layers); q ·= 1/sqrt(head_dim); attention (sliding-window layers see the last
 *                n_swa positions); x += RMSNorm(attn·Wo)·w_post_attn;
 *                h = RMSNorm(x)·w_ffn; x += RMSNorm((gelu(h·Wgate) ⊙ h·Wup)·Wdown)·w_post_ffw (GeGLU)
 *     logits = RMSNorm(x)·w · Wembᵀ (tied), optional final soft-capping
 *     Layer i is sliding-window unless i % pattern == pattern - 1 (pattern 6,
 *     `gemma3.attention.sliding_window_pattern` when present).
 * Norm weights are used as stored: the GGUF converter already folded Gemma's (1 + w).
 * llama2.c checkpoints run on models/decoder.c with run.c's numerics (hp.llama2c).
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

struct llm_arch;

typedef struct llm_hparams {
    const struct llm_arch *arch; /* the registry row that runs the file (llm/arch.h) */
    const char *arch_name;       /* general.architecture as the file says it (generic tier: its own) */
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
    float attn_softcap;   /* attention scores softcapped (Gemma 2; 0: none) */
    float logit_scale;    /* logits ·= logit_scale (Granite: 1/logit_scale of the file; else 1) */
    float res_scale;      /* residual branches ·= res_scale before the add (Granite; else 1) */
    int qk_norm;          /* llm_qk_norm (llm/arch.h): how attn_q_norm/attn_k_norm apply */
    const float *rope_freqs; /* [n_rot/2] frequency divisors (rope_freqs.weight, Llama 3), or NULL */
    const float *rope_long, *rope_short; /* LongRoPE (Phi-3): the factors beyond / within n_ctx_orig */
    int n_ctx_orig;       /* rope.scaling.original_context_length (LongRoPE's switch), else n_ctx_train */
    float rope_mscale;    /* cos/sin ·= this (rope.scaling.attn_factor; 1: none) */
    int fused_gate_up;    /* ffn_up = [gate; up] (Phi-3) */
    uint8_t *no_rope;     /* [n_layer] 1: the layer skips RoPE (SmolLM3), or NULL: none does */
    /* mixture of experts (llm/moe.c); n_expert 0: a dense MLP */
    int n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    int moe_norm_w;       /* renormalize the top-k weights to sum 1 (Qwen3-MoE, Granite-MoE) */
    float expert_weights_scale; /* the routing weights ·= this (1: none) */
} llm_hparams;

typedef struct llm_layer {
    const float *attn_norm, *ffn_norm;          /* [n_embd], NULL where the layout has none */
    const float *q_norm, *k_norm;               /* [head_dim_k] or the whole projection, or NULL */
    const float *post_attn_norm, *post_ffn_norm; /* [n_embd] (Gemma, OLMo 2), or NULL */
    const float *bq, *bk, *bv, *bo;             /* projection biases (Qwen2), or NULL */
    steno_mat wq, wk, wv, wo, ffn_gate, ffn_up, ffn_down;
    steno_mat wqkv; /* Q, K and V in one matrix (Phi-3), in place of wq/wk/wv */
    /* mixture of experts: the router [n_expert rows][E]; each expert's rows one after another in
     * the 3-D tensors (expert e: rows e·n_out .. (e+1)·n_out - 1, n_out = F_exp or E); the shared
     * expert and its gate ([E], or NULL) */
    steno_mat ffn_gate_inp, ffn_gate_exps, ffn_up_exps, ffn_down_exps, ffn_gate_shexp, ffn_up_shexp, ffn_down_shexp;
    const float *ffn_gate_inp_shexp;
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
    char *path, *name, *chat_template, *arch_name;
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
 *  models/decoder.c, models/gemma3.c; the registry row's forward). c is the executor: its scratch, pool and work buffers; the groups'
 *  contexts only lend their caches (c may be one of them). Token-wise work (norms, projections,
 *  MLP) runs on all T rows at once, so each weight is read once per pass; RoPE uses each row's own
 *  position and attention runs per group over its own cache. Every output row is computed by the
 *  same kernel calls whatever the other rows, so a group's result does not depend on its company.
 *  Leaves the final hidden states in c->x; advances each group's n_past by its T on success. On
 *  failure the caller rolls the groups' caches back. */
steno_status llm_forward_decoder(steno_llm_ctx *c, const int *tokens, int T, const llm_group *g, int ng);
steno_status llm_forward_gemma3(steno_llm_ctx *c, const int *tokens, int T, const llm_group *g, int ng);

/** Layer l's attention for every group: stores the group's rows of k and v ([T][n_kv_heads ·
 *  head_dim]) in its context's cache and attends its rows of q over that cache into att
 *  ([T][n_head · head_dim_v]), at the positions in c->pos. STENO_OK, or the cache's error, or
 *  STENO_E_NOMEM. */
steno_status llm_attend_groups(steno_llm_ctx *c, const llm_group *g, int ng, int l, const steno_attn_params *ap,
                               const float *q, const float *k, const float *v, float *att);

/** The RoPE frequency factors the executor c uses: the file's rope_freqs, else LongRoPE's long
 *  factors when c's context is longer than n_ctx_orig and its short ones otherwise (llama.cpp's
 *  get_rope_factors), else NULL. */
const float *llm_rope_factors(const steno_llm_ctx *c);

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

/** The mixture-of-experts MLP of layer L (llm/moe.c; llama.cpp's build_moe_ffn with softmax gating):
 *  for T rows of normed activations xb ([T][E]) writes y ([T][E]): each row's router softmax, its
 *  top n_expert_used experts (ties to the lower index), their weights (renormalized when
 *  moe_norm_w, scaled by expert_weights_scale), the experts' SwiGLU MLPs run as grouped products
 *  over the rows routed to each, summed in the rows' selection order; plus the shared expert
 *  (times sigmoid of its gate when it has one). A row's result does not depend on the other rows.
 *  STENO_OK or STENO_E_NOMEM. */
steno_status llm_moe_ffn(steno_llm_ctx *c, const llm_layer *L, const float *xb, int T, float *y);

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
