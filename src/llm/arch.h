/* arch.h — the architecture registry: one row per GGUF `general.architecture` steno runs (the seeds'
 * "targeted" tier, src/llm/models/<arch>.c each) and the generic tier for dense decoders the table
 * does not name (models/generic.c).
 *
 * A row says what the file must hold and how it runs: the layer tensors it requires and those it
 * may carry (roles below, each with its GGUF name and shape), the RoPE pairing, its own
 * hyper-parameter keys (a hook run after the keys every architecture shares, llm/loader.c), and its
 * forward pass. The loader checks every tensor of the file against the row: a missing required
 * tensor, a misshaped one, or a tensor no role claims fails the load with one line (llama.cpp
 * refuses a file whose tensor count differs from what it created, for the same reason: an unread
 * tensor is a part of the model the forward would silently skip).
 *
 * Adding an architecture: its file under src/llm/models/ with an `llm_arch` row, and that row's
 * name in LLM_ARCHS (models/registry.c).
 */
#ifndef STENO_LLM_ARCH_H
#define STENO_LLM_ARCH_H

#include "core/error.h"

struct steno_llm_ctx;
struct llm_group;
struct llm_hparams;
struct llm_loader;

/** The tensors a decoder layer may hold, by role (llama.cpp's LLM_TENSOR_* names). */
typedef enum {
    LT_ATTN_NORM,      /* blk.N.attn_norm.weight           [E] */
    LT_Q,              /* blk.N.attn_q.weight              [E][n_head·head_dim_k] */
    LT_K,              /* blk.N.attn_k.weight              [E][n_head_kv·head_dim_k] */
    LT_V,              /* blk.N.attn_v.weight              [E][n_head_kv·head_dim_v] */
    LT_O,              /* blk.N.attn_output.weight         [n_head·head_dim_v][E] */
    LT_Q_BIAS,         /* blk.N.attn_q.bias */
    LT_K_BIAS,         /* blk.N.attn_k.bias */
    LT_V_BIAS,         /* blk.N.attn_v.bias */
    LT_O_BIAS,         /* blk.N.attn_output.bias */
    LT_Q_NORM,         /* blk.N.attn_q_norm.weight   [head_dim_k] per head, or the whole projection */
    LT_K_NORM,         /* blk.N.attn_k_norm.weight */
    LT_POST_ATTN_NORM, /* blk.N.post_attention_norm.weight [E] */
    LT_FFN_NORM,       /* blk.N.ffn_norm.weight            [E] */
    LT_GATE,           /* blk.N.ffn_gate.weight            [E][F] */
    LT_UP,             /* blk.N.ffn_up.weight              [E][F] */
    LT_DOWN,           /* blk.N.ffn_down.weight            [F][E] */
    LT_POST_FFN_NORM,  /* blk.N.post_ffw_norm.weight       [E] */
    LT_QKV,            /* blk.N.attn_qkv.weight  [E][n_head·hd_k + 2·n_head_kv·hd] (Phi-3: Q, K, V fused) */
    /* mixture of experts (llm/moe.c) */
    LT_GATE_INP,       /* blk.N.ffn_gate_inp.weight        [E][n_expert]: the router */
    LT_GATE_EXPS,      /* blk.N.ffn_gate_exps.weight       [E][F_exp][n_expert] */
    LT_UP_EXPS,        /* blk.N.ffn_up_exps.weight         [E][F_exp][n_expert] */
    LT_DOWN_EXPS,      /* blk.N.ffn_down_exps.weight       [F_exp][E][n_expert] */
    LT_GATE_INP_SHEXP, /* blk.N.ffn_gate_inp_shexp.weight  [E]: the shared expert's sigmoid gate */
    LT_GATE_SHEXP,     /* blk.N.ffn_gate_shexp.weight      [E][F_shexp] */
    LT_UP_SHEXP,       /* blk.N.ffn_up_shexp.weight        [E][F_shexp] */
    LT_DOWN_SHEXP,     /* blk.N.ffn_down_shexp.weight      [F_shexp][E] */
    LT_COUNT
} llm_tensor_role;

#define LT_BIT(r) (1u << (r))
/** The layout most decoders share: pre-norms, Q/K/V/O, a gated MLP. */
#define LT_DENSE                                                                                                    \
    (LT_BIT(LT_ATTN_NORM) | LT_BIT(LT_Q) | LT_BIT(LT_K) | LT_BIT(LT_V) | LT_BIT(LT_O) | LT_BIT(LT_FFN_NORM) |          \
     LT_BIT(LT_GATE) | LT_BIT(LT_UP) | LT_BIT(LT_DOWN))
/** A mixture-of-experts MLP in place of ffn_gate/up/down (the router and the experts). */
#define LT_MOE (LT_BIT(LT_GATE_INP) | LT_BIT(LT_GATE_EXPS) | LT_BIT(LT_UP_EXPS) | LT_BIT(LT_DOWN_EXPS))
/** The shared expert of Qwen2-MoE (and Granite-MoE's, without the gate). */
#define LT_SHEXP (LT_BIT(LT_GATE_SHEXP) | LT_BIT(LT_UP_SHEXP) | LT_BIT(LT_DOWN_SHEXP))
/** Optional in every dense layout (llama.cpp's create_tensor_qkv loads them when present). */
#define LT_QKV_BIASES (LT_BIT(LT_Q_BIAS) | LT_BIT(LT_K_BIAS) | LT_BIT(LT_V_BIAS))

/** How attn_q_norm/attn_k_norm apply: over each head (Qwen3, Gemma 3) or the whole projection (OLMo 2). */
typedef enum { LLM_QK_NORM_NONE = 0, LLM_QK_NORM_HEAD = 1, LLM_QK_NORM_FULL = 2 } llm_qk_norm;

typedef steno_status (*llm_forward_fn)(struct steno_llm_ctx *c, const int *tokens, int T, const struct llm_group *g,
                                       int ng);

typedef struct llm_arch {
    const char *name;      /* general.architecture; its keys are prefixed "<name>." */
    unsigned required;     /* LT_BIT set every layer must hold */
    unsigned optional;     /* LT_BIT set a layer may hold */
    int rope_neox;         /* 0: adjacent pairs (LLAMA_ROPE_TYPE_NORM); 1: halves (NEOX) */
    llm_qk_norm qk_norm;   /* the shape attn_q_norm/attn_k_norm must have when present */
    int moe_norm_w;        /* MoE: the top-k routing weights are renormalized to sum to 1 */
    int fused_gate_up;     /* ffn_up holds gate and up ([E][2·F], gate first), no ffn_gate (Phi-3) */
    /* the architecture's own keys and derived values, after the shared ones (NULL: none) */
    steno_status (*hparams)(struct llm_loader *g, struct llm_hparams *hp);
    llm_forward_fn forward;
} llm_arch;

/** The row named `name` (general.architecture), or NULL. */
const llm_arch *llm_arch_find(const char *name);
/** The generic tier's row (models/generic.c): the dense layout, every optional piece allowed. */
const llm_arch *llm_arch_generic(void);
/** Writes the table's names, comma-separated, into buf (for error messages). */
void llm_arch_names(char *buf, size_t n);

#endif
