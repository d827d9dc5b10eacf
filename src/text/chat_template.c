/* chat_template.c — chat templates without a Jinja engine: the two families steno's models use,
 * recognised from tokenizer.chat_template (or the vocabulary when the file has no template):
 *   ChatML (SmolLM2, Qwen, ...): "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
 *     "<|im_start|>assistant\n". A default system message written in the template for
 *     conversations without one (SmolLM2's "You are a helpful AI assistant named SmolLM, trained by
 *     Hugging Face") is taken from the template text.
 *   Gemma (Gemma 2/3): "<start_of_turn>{user|model}\n{trimmed content}<end_of_turn>\n", a system
 *     message merged into the first user turn followed by "\n\n", then "<start_of_turn>model\n"
 *     (llama.cpp src/llama-chat.cpp LLM_CHAT_TEMPLATE_GEMMA; the Hugging Face template also
 *     writes <bos>, which here comes from the tokenizer's add_bos).
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "text/chat_template.h"
#include "text/llm_vocab.h"

typedef struct {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = (b->n + n + 1) * 2;
        char *p = realloc(b->p, nc);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

static void put_trimmed(sbuf *b, const char *s) {
    const char *e = s + strlen(s);
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r')) e--;
    put(b, s, (size_t)(e - s));
}

/* The default system prompt of a ChatML template: the literal after '<|im_start|>system\n' in the
 * branch taken when the first message is not a system message. Returns a malloc'd string or NULL. */
static char *chatml_default_system(const char *tmpl) {
    if (!tmpl || !strstr(tmpl, "!= 'system'")) return NULL;
    /* the template text may hold the Jinja escape (backslash, n) or a real newline byte there */
    const char *k = "'<|im_start|>system\\n", *k2 = "'<|im_start|>system\n";
    const char *s = strstr(tmpl, k), *s2 = strstr(tmpl, k2);
    if (s) s += strlen(k);
    else if (s2) s = s2 + strlen(k2);
    else return NULL;
    const char *e = strstr(s, "<|im_end|>");
    if (!e) return NULL;
    char *out = malloc((size_t)(e - s) + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (const char *c = s; c < e; c++) {
        if (c[0] == '\\' && c + 1 < e && c[1] == 'n') {
            out[o++] = '\n';
            c++;
        } else {
            out[o++] = *c;
        }
    }
    out[o] = '\0';
    return out;
}

steno_status steno_chat_apply(const char *tmpl, const steno_vocab *vocab, const char *name, const char *const *roles,
                              const char *const *contents, int n_msgs, int add_generation_prompt, char **out) {
    *out = NULL;
    int chatml = tmpl ? strstr(tmpl, "<|im_start|>") != NULL : steno_vocab_find(vocab, "<|im_start|>", 12) >= 0;
    int gemma = !chatml && ((tmpl && strstr(tmpl, "<start_of_turn>")) ||
                            (!tmpl && steno_vocab_find(vocab, "<start_of_turn>", 15) >= 0));
    sbuf b = {0};
    if (chatml) {
        if (n_msgs == 0 || strcmp(roles[0], "system") != 0) {
            char *def = chatml_default_system(tmpl);
            if (def) {
                puts_(&b, "<|im_start|>system\n");
                puts_(&b, def);
                puts_(&b, "<|im_end|>\n");
                free(def);
            }
        }
        for (int i = 0; i < n_msgs; i++) {
            puts_(&b, "<|im_start|>");
            puts_(&b, roles[i]);
            puts_(&b, "\n");
            puts_(&b, contents[i] ? contents[i] : "");
            puts_(&b, "<|im_end|>\n");
        }
        if (add_generation_prompt) puts_(&b, "<|im_start|>assistant\n");
    } else if (gemma) {
        sbuf sys = {0};
        for (int i = 0; i < n_msgs; i++) {
            const char *role = roles[i], *content = contents[i] ? contents[i] : "";
            if (strcmp(role, "system") == 0) {
                put_trimmed(&sys, content);
                continue;
            }
            const char *r = strcmp(role, "assistant") == 0 ? "model" : role;
            puts_(&b, "<start_of_turn>");
            puts_(&b, r);
            puts_(&b, "\n");
            if (sys.n > 0 && strcmp(r, "model") != 0) {
                put(&b, sys.p, sys.n);
                puts_(&b, "\n\n");
                sys.n = 0;
            }
            put_trimmed(&b, content);
            puts_(&b, "<end_of_turn>\n");
        }
        free(sys.p);
        if (add_generation_prompt) puts_(&b, "<start_of_turn>model\n");
    } else {
        return steno_fail(STENO_E_UNSUPPORTED, "%s: no chat template steno knows (ChatML or Gemma turns)", name);
    }
    if (b.oom || !b.p) {
        if (!b.oom && !b.p) {
            b.p = calloc(1, 1);
            if (b.p) {
                *out = b.p;
                return STENO_OK;
            }
        }
        free(b.p);
        return steno_fail(STENO_E_NOMEM, "chat template: out of memory");
    }
    *out = b.p;
    return STENO_OK;
}
