/* fuzz_jinja.c — libFuzzer target for the chat-template interpreter (src/text/jinja/): a hostile
 * template (a GGUF's tokenizer.chat_template is untrusted input) with a JSON context. Input: the
 * template, then a NUL byte, then the context's JSON (no NUL: a fixed two-message conversation).
 * Invariants: compile and render return OK or an error with a one-line message, never crash,
 * leak or hang: the limits (output bytes, memory, iterations, call depth) are set small here so a
 * run stays fast. Run: scripts/fuzz.sh jinja 10 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "steno.h"
#include "text/jinja/jinja.h"

static const char *DEFAULT_CTX =
    "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi \\u00e9\"},"
    "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}],"
    "\"add_generation_prompt\":true,\"bos_token\":\"<s>\",\"eos_token\":\"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t tlen = nul ? (size_t)(nul - data) : size;
    cJSON *ctx = NULL;
    if (nul) {
        char *js = malloc(size - tlen);
        memcpy(js, nul + 1, size - tlen - 1);
        js[size - tlen - 1] = '\0';
        ctx = cJSON_Parse(js);
        free(js);
    }
    if (!ctx) ctx = cJSON_Parse(DEFAULT_CTX);
    steno_jinja_opts o;
    steno_jinja_default_opts(&o);
    o.max_output = 1 << 20;
    o.max_memory = (size_t)64 << 20;
    o.max_iterations = 100000;
    o.max_depth = 16;
    o.now = 1722000000;
    steno_jinja_template *t = NULL;
    if (steno_jinja_compile((const char *)data, tlen, &t) == STENO_OK) {
        char *out = NULL;
        if (steno_jinja_render_compiled(t, ctx, &o, &out) != STENO_OK) {
            const char *m = steno_errmsg();
            if (!m || strchr(m, '\n')) abort(); /* one line */
        }
        free(out);
        steno_jinja_template_free(t);
    } else if (strchr(steno_errmsg(), '\n')) abort();
    cJSON_Delete(ctx);
    return 0;
}
