/* granite.c — IBM Granite 3.x, dense and MoE (llama.cpp src/models/granite.cpp, granite-moe.cpp; mlx-lm
 * models/granite.py, granitemoe.py):
 * Llama's layout with four scales from the file: the embedding (granite.embedding_scale), the
 * attention (granite.attention.scale, in place of 1/sqrt(head_dim)), each residual branch
 * (granite.residual_scale) and the logits (divided by granite.logit_scale). granitemoe: the same,
 * with a mixture of experts (softmax top-k, weights renormalized; an ungated shared expert when the
 * file has one; llm/moe.c) in place of the MLP. Both run on models/decoder.c. */
#include "llm/arch.h"
#include "llm/loader.h"

static steno_status granite_hparams(llm_loader *g, llm_hparams *hp) {
    float logit_scale, attn_scale;
    steno_status st;
    if ((st = llm_get_float(g, "logit_scale", 0.0, 1, &logit_scale)) != STENO_OK) return st;
    if (!(logit_scale != 0.0f)) return steno_fail(STENO_E_FORMAT, "%s: %s is 0", g->fn, llm_key(g, "logit_scale"));
    hp->logit_scale = 1.0f / logit_scale; /* ggml_scale(cur, 1.0f / f_logit_scale) */
    if ((st = llm_get_float(g, "residual_scale", 0.0, 0, &hp->res_scale)) != STENO_OK) return st;
    if (hp->res_scale == 0.0f) hp->res_scale = 1.0f; /* absent: no scaling */
    if ((st = llm_get_float(g, "embedding_scale", 0.0, 0, &hp->embd_scale)) != STENO_OK) return st;
    if (hp->embd_scale == 0.0f) hp->embd_scale = 1.0f;
    if ((st = llm_get_float(g, "attention.scale", 0.0, 0, &attn_scale)) != STENO_OK) return st;
    if (attn_scale != 0.0f) hp->kq_scale = attn_scale;
    return STENO_OK;
}

const llm_arch llm_arch_granite = {
    .name = "granite",
    .required = LT_DENSE,
    .optional = LT_QKV_BIASES | LT_BIT(LT_O_BIAS),
    .rope_neox = 0,
    .hparams = granite_hparams,
    .forward = llm_forward_decoder,
};

/* Granite-MoE's experts are feed_forward_length wide (llama.cpp's granite-moe.cpp sizes them by n_ff) */
static steno_status granitemoe_hparams(llm_loader *g, llm_hparams *hp) {
    hp->n_ff_exp = hp->n_ff;
    return granite_hparams(g, hp);
}

const llm_arch llm_arch_granitemoe = {
    .name = "granitemoe",
    .required = (LT_DENSE & ~(LT_BIT(LT_GATE) | LT_BIT(LT_UP) | LT_BIT(LT_DOWN))) | LT_MOE,
    .optional = LT_QKV_BIASES | LT_BIT(LT_O_BIAS) | LT_SHEXP,
    .rope_neox = 0,
    .moe_norm_w = 1,
    .hparams = granitemoe_hparams,
    .forward = llm_forward_decoder,
};
