/* olmo2.c — OLMo 2 (llama.cpp src/models/olmo2.cpp; mlx-lm models/olmo2.py): no pre-norms; an
 * RMSNorm over the whole Q and K projections (not per head) before RoPE (halves); the attention and
 * MLP outputs each normed (post_attention_norm, post_ffw_norm) before their residual add. Runs on
 * models/decoder.c. */
#include "llm/arch.h"
#include "llm/model.h"

const llm_arch llm_arch_olmo2 = {
    .name = "olmo2",
    .required = LT_BIT(LT_Q) | LT_BIT(LT_K) | LT_BIT(LT_V) | LT_BIT(LT_O) | LT_BIT(LT_Q_NORM) | LT_BIT(LT_K_NORM) |
                LT_BIT(LT_POST_ATTN_NORM) | LT_BIT(LT_GATE) | LT_BIT(LT_UP) | LT_BIT(LT_DOWN) |
                LT_BIT(LT_POST_FFN_NORM),
    .rope_neox = 1,
    .qk_norm = LLM_QK_NORM_FULL,
    .forward = llm_forward_decoder,
};
