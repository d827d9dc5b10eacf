/* llama.c — Llama (llama.cpp src/models/llama.cpp): the dense layout, RoPE on adjacent pairs. Also
 * what Llama 2/3.x, Mistral, TinyLlama, SmolLM and llama2.c files say they are. Llama 3.1+'s
 * long-context frequencies arrive as the rope_freqs tensor (llm/loader.c reads it for every
 * architecture). Runs on models/decoder.c. */
#include "llm/arch.h"
#include "llm/model.h"

const llm_arch llm_arch_llama = {
    .name = "llama",
    .required = LT_DENSE,
    .optional = LT_QKV_BIASES | LT_BIT(LT_O_BIAS),
    .rope_neox = 0,
    .forward = llm_forward_decoder,
};
