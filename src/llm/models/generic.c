/* generic.c — the generic tier (the seeds' Tier-0 "universal dense" descriptor): a decoder whose
 * general.architecture is not in the registry but whose file follows the common layout runs on
 * models/decoder.c, configured by what the file declares: its <arch>.* keys (the shared ones,
 * llm/loader.c), optional Q/K/V/O biases, QK-norm in either shape, post-norms, rope_freqs. RoPE
 * pairs are Llama's (llama.cpp's default, LLAMA_ROPE_TYPE_NORM, for architectures it does not
 * list otherwise). A tensor outside this layout fails the load (llm/loader.c names it). */
#include "llm/arch.h"
#include "llm/model.h"

static const llm_arch GENERIC = {
    .name = "generic",
    .required = LT_BIT(LT_Q) | LT_BIT(LT_K) | LT_BIT(LT_V) | LT_BIT(LT_O) | LT_BIT(LT_GATE) | LT_BIT(LT_UP) |
                LT_BIT(LT_DOWN),
    .optional = LT_BIT(LT_ATTN_NORM) | LT_BIT(LT_FFN_NORM) | LT_QKV_BIASES | LT_BIT(LT_O_BIAS) |
                LT_BIT(LT_Q_NORM) | LT_BIT(LT_K_NORM) | LT_BIT(LT_POST_ATTN_NORM) | LT_BIT(LT_POST_FFN_NORM),
    .rope_neox = 0,
    .qk_norm = LLM_QK_NORM_HEAD, /* llm/loader.c reads the shape the file has */
    .forward = llm_forward_decoder,
};

const llm_arch *llm_arch_generic(void) { return &GENERIC; }
