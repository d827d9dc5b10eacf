/* smollm3.c — SmolLM3 (llama.cpp src/models/smollm3.cpp): Llama's layout, but every fourth layer
 * (layer i with (i + 1) % 4 == 0) attends without RoPE. Runs on models/decoder.c. */
#include <stdlib.h>

#include "llm/arch.h"
#include "llm/loader.h"

static steno_status smollm3_hparams(llm_loader *g, llm_hparams *hp) {
    hp->no_rope = calloc((size_t)hp->n_layer, 1);
    if (!hp->no_rope) return steno_fail(STENO_E_NOMEM, "%s: out of memory", g->fn);
    for (int l = 0; l < hp->n_layer; l++) hp->no_rope[l] = (l + 1) % 4 == 0; /* n_no_rope_layer_step */
    return STENO_OK;
}

const llm_arch llm_arch_smollm3 = {
    .name = "smollm3",
    .required = LT_DENSE,
    .optional = LT_QKV_BIASES,
    .rope_neox = 0,
    .hparams = smollm3_hparams,
    .forward = llm_forward_decoder,
};
