/* jinja.h — a Jinja2 interpreter for chat templates (GGUF tokenizer.chat_template, Hugging Face
 * tokenizer_config.json chat_template), byte-exact with Python's jinja2 as transformers runs it
 * (transformers/utils/chat_template_utils.py, _compile_jinja_template):
 * ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker,
 * loopcontrols]) with transformers' tojson filter (json.dumps, ensure_ascii=False) and globals
 * raise_exception and strftime_now.
 *
 * The subset is what real chat templates use; docs/LLM.md lists it. Values follow Python's
 * semantics (int vs float, True/False/None, lists and dicts printed as their repr, jinja2's
 * Undefined). A render is bounded in output bytes, memory, loop iterations and call depth, so a
 * hostile template fails with an error instead of hanging or exhausting memory.
 */
#ifndef STENO_TEXT_JINJA_JINJA_H
#define STENO_TEXT_JINJA_JINJA_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "steno.h"

typedef struct steno_jinja_template steno_jinja_template;

/* Limits and injected inputs of one render; take the defaults from steno_jinja_default_opts. */
typedef struct {
    size_t max_output;       /* bytes of rendered text (default 8 MiB) */
    size_t max_memory;       /* bytes of values made while rendering (default 256 MiB) */
    int64_t max_iterations;  /* loop iterations and macro calls, summed (default 10 000 000) */
    int max_depth;           /* nested macro/caller calls (default 64) */
    int64_t now;             /* strftime_now's time as Unix seconds shown as UTC wall-clock time;
                              * -1 (default): the current local time, as datetime.now() */
} steno_jinja_opts;

void steno_jinja_default_opts(steno_jinja_opts *o);

/** Compiles tmpl[len] (UTF-8). *out is freed with steno_jinja_template_free. A compiled template is
 *  immutable: any number of threads may render it at once. Errors (STENO_E_FORMAT: syntax, with
 *  steno_errmsg() "chat template line N: ..."; STENO_E_NOMEM). */
steno_status steno_jinja_compile(const char *tmpl, size_t len, steno_jinja_template **out);
void steno_jinja_template_free(steno_jinja_template *t);

/** Renders t with the variables of context (a JSON object: messages, tools, add_generation_prompt,
 *  bos_token, ...; NULL = none). opts NULL = defaults. On success *out is a malloc'd NUL-terminated
 *  string (free()). Errors: STENO_E_FORMAT (a runtime error: raise_exception's message, a type
 *  error, an undefined value used; a limit reached), STENO_E_UNSUPPORTED (a filter, test or method
 *  this interpreter does not have), STENO_E_NOMEM; steno_errmsg() holds one line naming the
 *  template line ("chat template line 3: raise_exception: Conversation roles must alternate").
 *  Thread-safe. */
steno_status steno_jinja_render_compiled(const steno_jinja_template *t, const cJSON *context,
                                         const steno_jinja_opts *opts, char **out);

/** Compile and render in one call; the error line is also copied to err[errlen] when err is
 *  non-NULL. */
steno_status steno_jinja_render(const char *tmpl, size_t len, const cJSON *context, const steno_jinja_opts *opts,
                                char **out, char *err, size_t errlen);

#endif
