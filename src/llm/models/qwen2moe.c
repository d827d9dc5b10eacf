/* qwen2moe.c — Qwen2-MoE / Qwen1.5-MoE (llama.cpp src/models/qwen2moe.cpp; mlx-lm
 * models/qwen2_moe.py): Qwen2's attention (Q/K/V biases, RoPE on halves); the MLP is a mixture of
 * experts with softmax top-k routing, weights not renormalized, plus a shared expert scaled by the
 * sigmoid of its own gate (llm/moe.c). Runs on models/decoder.c. */
#include "llm/arch.h"
#include "llm/model.h"

const llm_arch llm_arch_qwen2moe = {
    .name = "qwen2moe",
    .required = (LT_DENSE & ~(LT_BIT(LT_GATE) | LT_BIT(LT_UP) | LT_BIT(LT_DOWN))) | LT_MOE | LT_SHEXP |
                LT_BIT(LT_GATE_INP_SHEXP),
    .optional = LT_QKV_BIASES,
    .rope_neox = 1,
    .moe_norm_w = 0,
    .forward = llm_forward_decoder,
};
