/* qwen2.c — Qwen2 / Qwen2.5 (llama.cpp src/models/qwen2.cpp; mlx-lm models/qwen2.py): the dense
 * layout with biases on the Q/K/V projections, RoPE on halves (NEOX). Runs on models/decoder.c. */
#include "llm/arch.h"
#include "llm/model.h"

const llm_arch llm_arch_qwen2 = {
    .name = "qwen2",
    .required = LT_DENSE,
    .optional = LT_QKV_BIASES,
    .rope_neox = 1,
    .forward = llm_forward_decoder,
};
