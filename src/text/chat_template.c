/* chat_template.c — a conversation as the model's prompt text.
 *
 * When the file has a template (tokenizer.chat_template), it is rendered by steno's Jinja
 * interpreter (text/jinja/jinja.h, byte-exact with Python's jinja2 as transformers runs it) with
 * the variables llama.cpp passes (common/chat.cpp, common_chat_templates_init and apply):
 * messages [{role, content}], add_generation_prompt, bos_token and eos_token (the texts of the
 * vocabulary's BOS/EOS tokens, "" when absent). Then, as llama.cpp does, a leading BOS text is
 * dropped when the tokenizer adds BOS itself, and a trailing EOS text when it adds EOS, so that
 * tokenizing with add_special does not double them.
 *
 * Only when the file has no template are the two families steno knew before recognised from the
 * vocabulary's special tokens and written by hand:
 *   ChatML (SmolLM2, Qwen, ...): "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
 *     "<|im_start|>assistant\n".
 *   Gemma (Gemma 2/3): "<start_of_turn>{user|model}\n{trimmed content}<end_of_turn>\n", a system
 *     message merged into the first user turn followed by "\n\n", then "<start_of_turn>model\n"
 *     (llama.cpp src/llama-chat.cpp LLM_CHAT_TEMPLATE_GEMMA; the Hugging Face template also
 *     writes <bos>, which here comes from the tokenizer's add_bos).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "text/chat_template.h"
#include "text/jinja/jinja.h"
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

static const char *token_text(const steno_vocab *v, int id) {
    return v && id >= 0 && id < v->n && v->text[id] ? v->text[id] : "";
}

/* The file's template through the Jinja interpreter (see the header comment). */
static steno_status render_template(const char *tmpl, const steno_jinja_template *compiled,
                                    const steno_vocab *vocab, const char *name,
                                    const char *const *roles, const char *const *contents, int n_msgs,
                                    int add_generation_prompt, char **out) {
    cJSON *ctx = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(ctx, "messages");
    const char *bos = token_text(vocab, vocab ? vocab->bos : -1), *eos = token_text(vocab, vocab ? vocab->eos : -1);
    int ok = ctx && msgs;
    for (int i = 0; ok && i < n_msgs; i++) {
        cJSON *m = cJSON_CreateObject();
        ok = m && cJSON_AddItemToArray(msgs, m) && cJSON_AddStringToObject(m, "role", roles[i]) &&
             cJSON_AddStringToObject(m, "content", contents[i] ? contents[i] : "");
    }
    ok = ok && cJSON_AddBoolToObject(ctx, "add_generation_prompt", add_generation_prompt != 0) &&
         cJSON_AddStringToObject(ctx, "bos_token", bos) && cJSON_AddStringToObject(ctx, "eos_token", eos);
    if (!ok) {
        cJSON_Delete(ctx);
        return steno_fail(STENO_E_NOMEM, "chat template: out of memory");
    }
    char *text = NULL;
    steno_status st = compiled ? steno_jinja_render_compiled(compiled, ctx, NULL, &text)
                               : steno_jinja_render(tmpl, strlen(tmpl), ctx, NULL, &text, NULL, 0);
    cJSON_Delete(ctx);
    if (st != STENO_OK) {
        /* a template the interpreter cannot run is the file's problem, not an unknown family */
        char msg[400];
        snprintf(msg, sizeof msg, "%s", steno_errmsg()); /* steno_fail rewrites that buffer */
        return steno_fail(st == STENO_E_NOMEM ? st : STENO_E_FORMAT, "%s: %s", name, msg);
    }
    size_t n = strlen(text), bl = strlen(bos), el = strlen(eos), skip = 0;
    if (vocab && vocab->add_bos && bl && n >= bl && memcmp(text, bos, bl) == 0) skip = bl;
    if (vocab && vocab->add_eos && el && n - skip >= el && memcmp(text + n - el, eos, el) == 0) n -= el;
    memmove(text, text + skip, n - skip);
    text[n - skip] = '\0';
    *out = text;
    return STENO_OK;
}

steno_status steno_chat_apply(const char *tmpl, const steno_jinja_template *compiled, const steno_vocab *vocab,
                              const char *name, const char *const *roles, const char *const *contents, int n_msgs,
                              int add_generation_prompt, char **out) {
    *out = NULL;
    if (tmpl) return render_template(tmpl, compiled, vocab, name, roles, contents, n_msgs, add_generation_prompt, out);
    int chatml = steno_vocab_find(vocab, "<|im_start|>", 12) >= 0;
    int gemma = !chatml && steno_vocab_find(vocab, "<start_of_turn>", 15) >= 0;
    sbuf b = {0};
    if (chatml) {
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
        return steno_fail(STENO_E_UNSUPPORTED,
                          "%s: no chat template (tokenizer.chat_template) and no chat format steno knows "
                          "(ChatML or Gemma turns)",
                          name);
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
