/* registry.c — the table of architectures steno runs (llm/arch.h): one row per file under
 * src/llm/models/, found by general.architecture. */
#include <stdio.h>
#include <string.h>

#include "llm/arch.h"

extern const llm_arch llm_arch_llama, llm_arch_qwen2, llm_arch_qwen3, llm_arch_granite, llm_arch_olmo2,
    llm_arch_smollm3, llm_arch_gemma3, llm_arch_qwen2moe, llm_arch_qwen3moe, llm_arch_olmoe, llm_arch_granitemoe,
    llm_arch_phi3, llm_arch_gemma2;

static const llm_arch *const LLM_ARCHS[] = {
    &llm_arch_llama,    &llm_arch_qwen2,    &llm_arch_qwen3,  &llm_arch_granite,    &llm_arch_olmo2,   &llm_arch_smollm3,
    &llm_arch_gemma3,   &llm_arch_qwen2moe, &llm_arch_qwen3moe, &llm_arch_olmoe,    &llm_arch_granitemoe,
    &llm_arch_phi3,     &llm_arch_gemma2,
};

const llm_arch *llm_arch_find(const char *name) {
    for (size_t i = 0; i < sizeof LLM_ARCHS / sizeof LLM_ARCHS[0]; i++)
        if (strcmp(LLM_ARCHS[i]->name, name) == 0) return LLM_ARCHS[i];
    return NULL;
}

void llm_arch_names(char *buf, size_t n) {
    size_t o = 0;
    if (n) buf[0] = '\0';
    for (size_t i = 0; i < sizeof LLM_ARCHS / sizeof LLM_ARCHS[0] && o < n; i++) {
        int w = snprintf(buf + o, n - o, "%s%s", i ? ", " : "", LLM_ARCHS[i]->name);
        if (w < 0) break;
        o += (size_t)w;
    }
}
