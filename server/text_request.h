/* text_request.h — a chat or completion request body (OpenAI's JSON) checked field by field and
 * turned into a prompt and generation settings, without HTTP: routes_text.c answers with it, and
 * fuzz/fuzz_text_request.c fuzzes it. */
#ifndef STENO_SERVER_TEXT_REQUEST_H
#define STENO_SERVER_TEXT_REQUEST_H

#include <cjson/cJSON.h>

#include "sched/sched.h"
#include "server/api_error.h"
#include "steno_llm.h"

#define MAX_STOP 16
#define MAX_BIAS 1024

typedef struct text_req {
    int chat;
    int stream, include_usage, logprobs, top_logprobs, echo;
    int max_tokens;
    steno_sampler_params sp;
    steno_logit_bias bias[MAX_BIAS];
    const char *stop[MAX_STOP];
    int n_stop;
    int *prompt;
    int n_prompt;
    char *prompt_text; /* completions with echo */
    char id[48];
    long created;
} text_req;

/** What the parse needs of the server: the model, its API name, the --max-tokens limit. */
typedef struct text_limits {
    const steno_llm *m;
    const char *llm_id;
    int max_tokens;
} text_limits;

/** Reads body into t (t->chat chooses chat or completions; the rest of t zeroed by the caller):
 *  the sampling settings, the stop strings (pointing into body), and the prompt tokenized
 *  (t->prompt malloc'd; text_request_free). Returns 0, or -1 with e set (a 400 naming the field,
 *  or a 404 for another model). */
int text_request_parse(const text_limits *L, cJSON *body, text_req *t, api_error *e);
void text_request_free(text_req *t);
/** 1 when s is valid UTF-8. */
int text_valid_utf8(const char *s);

#endif
