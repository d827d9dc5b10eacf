/* qwen3.c — Qwen3 (llama.cpp src/models/qwen3.cpp; mlx-lm models/qwen3.py): the dense layout with
 * an RMSNorm over each head of Q and K before RoPE (halves). Runs on models/decoder.c. */
#include "llm/arch.h"
#include "llm/model.h"

const llm_arch llm_arch_qwen3 = {
    .name = "qwen3",
    .required = LT_DENSE | LT_BIT(LT_Q_NORM) | LT_BIT(LT_K_NORM),
    .optional = LT_QKV_BIASES,
    .rope_neox = 1,
    .qk_norm = LLM_QK_NORM_HEAD,
    .forward = llm_forward_decoder,
};
