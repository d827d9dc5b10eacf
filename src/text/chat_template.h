/* chat_template.h — chat formatting for the template families steno knows (see chat_template.c). */
#ifndef STENO_TEXT_CHAT_TEMPLATE_H
#define STENO_TEXT_CHAT_TEMPLATE_H

#include "steno.h"
#include "text/llm_vocab.h"

/** Formats n_msgs messages (roles "system"/"user"/"assistant", UTF-8 contents) with the family
 *  recognised from tmpl (tokenizer.chat_template, may be NULL: then from the vocabulary's special
 *  tokens), appending the assistant's opening when add_generation_prompt. *out is malloc'd.
 *  name is used in messages. Errors: STENO_E_UNSUPPORTED (unknown family), STENO_E_NOMEM. */
steno_status steno_chat_apply(const char *tmpl, const steno_vocab *vocab, const char *name, const char *const *roles,
                              const char *const *contents, int n_msgs, int add_generation_prompt, char **out);

#endif
