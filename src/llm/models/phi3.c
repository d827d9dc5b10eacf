/* phi3.c — Phi-3, Phi-3.5, Phi-4-mini (llama.cpp src/models/phi3.cpp; mlx-lm models/phi3.py): Q, K and
 * V in one matrix (attn_qkv), gate and up in one (ffn_up = [gate; up]), RoPE on halves over the
 * first rope.dimension_count dims of each head (partial rotary, Phi-4-mini), q scaled by
 * 1/sqrt(head_dim) after RoPE with attention scale 1; LongRoPE: the angles divided by the file's
 * short or long factors (long when the context exceeds rope.scaling.original_context_length) and
 * cos/sin scaled by rope.scaling.attn_factor. Like llama.cpp, steno ignores Phi-3's sliding window
 * (llama.cpp disables it for these files). Runs on models/decoder.c. */
#include <math.h>

#include "llm/arch.h"
#include "llm/loader.h"

static steno_status phi3_hparams(llm_loader *g, llm_hparams *hp) {
    (void)g;
    hp->q_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    hp->kq_scale = 1.0f;
    return STENO_OK;
}

const llm_arch llm_arch_phi3 = {
    .name = "phi3",
    .required = LT_BIT(LT_ATTN_NORM) | LT_BIT(LT_QKV) | LT_BIT(LT_O) | LT_BIT(LT_FFN_NORM) | LT_BIT(LT_UP) |
                LT_BIT(LT_DOWN),
    .rope_neox = 1,
    .fused_gate_up = 1,
    .hparams = phi3_hparams,
    .forward = llm_forward_decoder,
};
