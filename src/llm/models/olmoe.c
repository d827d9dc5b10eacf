/* olmoe.c — OLMoE (llama.cpp src/models/olmoe.cpp; mlx-lm models/olmoe.py): pre-norms, an RMSNorm over
 * the whole Q and K projections, RoPE on halves; the MLP is a mixture of experts with softmax top-k
 * routing, weights not renormalized (llm/moe.c). Runs on models/decoder.c. */
#include "llm/arch.h"
#include "llm/loader.h"

/* the experts are feed_forward_length wide (llama.cpp's olmoe.cpp sizes them by n_ff) */
static steno_status olmoe_hparams(llm_loader *g, llm_hparams *hp) {
    (void)g;
    hp->n_ff_exp = hp->n_ff;
    return STENO_OK;
}

const llm_arch llm_arch_olmoe = {
    .name = "olmoe",
    .required = (LT_DENSE & ~(LT_BIT(LT_GATE) | LT_BIT(LT_UP) | LT_BIT(LT_DOWN))) | LT_MOE | LT_BIT(LT_Q_NORM) |
                LT_BIT(LT_K_NORM),
    .optional = LT_QKV_BIASES,
    .rope_neox = 1,
    .qk_norm = LLM_QK_NORM_FULL,
    .moe_norm_w = 0,
    .hparams = olmoe_hparams,
    .forward = llm_forward_decoder,
};
