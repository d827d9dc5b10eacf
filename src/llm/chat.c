/* chat.c — steno_llm_chat_format: a conversation rendered with the model's chat template
 * (text/chat_template.c does the rendering). */
#include <stdlib.h>

#include "core/error.h"
#include "llm/model.h"
#include "text/chat_template.h"

steno_status steno_llm_chat_format(const steno_llm *m, const steno_chat_msg *msgs, int n_msgs,
                                   int add_generation_prompt, char **out) {
    *out = NULL;
    if (n_msgs < 0) return steno_fail(STENO_E_INVALID_ARG, "chat: negative message count");
    const char **roles = malloc((size_t)(n_msgs + 1) * sizeof(char *));
    const char **contents = malloc((size_t)(n_msgs + 1) * sizeof(char *));
    if (!roles || !contents) {
        free(roles);
        free(contents);
        return steno_fail(STENO_E_NOMEM, "chat: out of memory");
    }
    for (int i = 0; i < n_msgs; i++) {
        roles[i] = msgs[i].role ? msgs[i].role : "user";
        contents[i] = msgs[i].content ? msgs[i].content : "";
    }
    steno_status st = steno_chat_apply(m->chat_template, m->chat_jinja, m->vocab, m->path, roles, contents, n_msgs,
                                       add_generation_prompt, out);
    free(roles);
    free(contents);
    return st;
}
