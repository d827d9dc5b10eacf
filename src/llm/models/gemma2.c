/* gemma2.c — Gemma 2 (llama.cpp src/models/gemma2.cpp; mlx-lm models/gemma2.py) on Gemma 3's forward
 * (models/gemma3.c): embeddings × sqrt(n_embd), RoPE on halves, q × query_pre_attn_scalar^-1/2
 * (1/sqrt(head_dim); n_embd/n_head for the 27B model, 46 layers), attention scores soft-capped
 * (attn_logit_softcapping, default 50), post-attention and post-FFN norms, GeGLU, final logits
 * soft-capped (final_logit_softcapping, default 30); layer i slides over the last
 * attention.sliding_window positions (default 4096) when i is even (pattern 2). */
#include <math.h>

#include "llm/arch.h"
#include "llm/loader.h"

static steno_status gemma2_hparams(llm_loader *g, llm_hparams *hp) {
    steno_status st;
    if ((st = llm_get_int(g, "attention.sliding_window", 4096, 0, 1 << 24, &hp->n_swa)) != STENO_OK) return st;
    for (int l = 0; l < hp->n_layer; l++) hp->is_swa[l] = hp->n_swa > 0 && l % 2 == 0;
    hp->rope_base_swa = hp->rope_base;
    hp->embd_scale = sqrtf((float)hp->n_embd);
    hp->q_scale = hp->n_layer == 46 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head)) : 1.0f / sqrtf((float)hp->head_dim_k);
    hp->kq_scale = 1.0f;
    if ((st = llm_get_float(g, "attn_logit_softcapping", 50.0, 0, &hp->attn_softcap)) != STENO_OK) return st;
    return llm_get_float(g, "final_logit_softcapping", 30.0, 0, &hp->logit_softcap);
}

const llm_arch llm_arch_gemma2 = {
    .name = "gemma2",
    .required = LT_DENSE | LT_BIT(LT_POST_ATTN_NORM) | LT_BIT(LT_POST_FFN_NORM),
    .rope_neox = 1,
    .hparams = gemma2_hparams,
    .forward = llm_forward_gemma3,
};
