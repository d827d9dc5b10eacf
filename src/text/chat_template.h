/* chat_template.h — chat formatting for the template families steno knows (see chat_template.c). */
#ifndef STENO_TEXT_CHAT_TEMPLATE_H
#define STENO_TEXT_CHAT_TEMPLATE_H

#include "steno.h"
#include "text/llm_vocab.h"

struct steno_jinja_template;

/** Formats n_msgs messages (roles such as "system"/"user"/"assistant", UTF-8 contents) as the
 *  model's prompt, appending the assistant's opening when add_generation_prompt. tmpl is the
 *  file's tokenizer.chat_template: rendered with the Jinja interpreter (text/jinja/jinja.h) with
 *  messages, add_generation_prompt, bos_token and eos_token, as llama.cpp does; NULL: the family
 *  recognised from the vocabulary's special tokens (ChatML or Gemma turns). compiled: tmpl
 *  compiled once (steno_jinja_compile), or NULL to compile it here. *out is malloc'd.
 *  name is used in messages. Errors: STENO_E_FORMAT (the template fails: syntax, raise_exception,
 *  a construct the interpreter lacks; the message names the template line), STENO_E_UNSUPPORTED
 *  (no template and no known family), STENO_E_NOMEM. Thread-safe. */
steno_status steno_chat_apply(const char *tmpl, const struct steno_jinja_template *compiled, const steno_vocab *vocab,
                              const char *name, const char *const *roles, const char *const *contents, int n_msgs,
                              int add_generation_prompt, char **out);

#endif
