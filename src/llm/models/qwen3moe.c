/* qwen3moe.c — Qwen3-MoE (llama.cpp src/models/qwen3moe.cpp; mlx-lm models/qwen3_moe.py): Qwen3's
 * attention (per-head QK-norm, RoPE on halves); the MLP is a mixture of experts with softmax top-k
 * routing and the top-k weights renormalized to sum 1 (norm_topk_prob; llm/moe.c). Runs on
 * models/decoder.c. */
#include "llm/arch.h"
#include "llm/model.h"

const llm_arch llm_arch_qwen3moe = {
    .name = "qwen3moe",
    .required = (LT_DENSE & ~(LT_BIT(LT_GATE) | LT_BIT(LT_UP) | LT_BIT(LT_DOWN))) | LT_MOE | LT_BIT(LT_Q_NORM) |
                LT_BIT(LT_K_NORM),
    .optional = LT_QKV_BIASES,
    .rope_neox = 1,
    .qk_norm = LLM_QK_NORM_HEAD,
    .moe_norm_w = 1,
    .forward = llm_forward_decoder,
};
