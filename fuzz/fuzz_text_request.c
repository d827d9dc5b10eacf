/* fuzz_text_request.c — libFuzzer target for the server's chat/completion request parser
 * (server/text_request.c: OpenAI's JSON body → prompt tokens and generation settings), over the
 * stories260K model of shared/ (FUZZ_TEXT_REQUEST_MODEL overrides). Input: the first byte picks
 * chat (odd) or completions; the rest is the body, as the server hands it over (valid UTF-8,
 * parsed by cJSON; the server answers anything else with a 400 before this parser).
 *
 * Invariants: on success, a non-empty prompt of token ids below n_vocab, max_tokens in
 * [1, the limit], at most 16 stop strings, top_logprobs in [0, 20], temperature in [0, 2] and
 * top_p, min_p in [0, 1]; on failure, status 400 or 404 and a non-empty one-line message.
 * Run: scripts/fuzz.sh text_request 10 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/text_request.h"

#ifndef STENO_FUZZ_DEFAULT_MODEL
#define STENO_FUZZ_DEFAULT_MODEL "../shared/models/stories260K/stories260K.bin"
#endif

static steno_llm *g_m;
static int g_vocab;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *path = getenv("FUZZ_TEXT_REQUEST_MODEL");
    if (!path || !*path) path = STENO_FUZZ_DEFAULT_MODEL;
    if (steno_llm_load(path, NULL, &g_m) != STENO_OK) {
        fprintf(stderr, "fuzz_text_request: %s\n", steno_errmsg());
        abort();
    }
    steno_llm_info info;
    steno_llm_get_info(g_m, &info);
    g_vocab = info.n_vocab;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 65536) return 0;
    char *body = malloc(size);
    if (!body) abort();
    memcpy(body, data + 1, size - 1);
    body[size - 1] = '\0';
    if (strlen(body) != size - 1 || !text_valid_utf8(body)) {
        free(body);
        return 0;
    }
    cJSON *json = cJSON_ParseWithLength(body, size - 1);
    if (!json) {
        free(body);
        return 0;
    }
    const text_limits limits = {g_m, "stories260K", 64};
    text_req *t = calloc(1, sizeof *t);
    if (!t) abort();
    t->chat = data[0] & 1;
    api_error e;
    memset(&e, 0, sizeof e);
    if (text_request_parse(&limits, json, t, &e) == 0) {
        if (t->n_prompt <= 0 || !t->prompt) abort();
        for (int i = 0; i < t->n_prompt; i++)
            if (t->prompt[i] < 0 || t->prompt[i] >= g_vocab) abort();
        if (t->max_tokens < 1 || t->max_tokens > limits.max_tokens) abort();
        if (t->n_stop < 0 || t->n_stop > 16) abort();
        for (int i = 0; i < t->n_stop; i++)
            if (!t->stop[i]) abort();
        if (t->top_logprobs < 0 || t->top_logprobs > 20) abort();
        if (!(t->sp.temperature >= 0 && t->sp.temperature <= 2) || !(t->sp.top_p >= 0 && t->sp.top_p <= 1) ||
            !(t->sp.min_p >= 0 && t->sp.min_p <= 1))
            abort();
        if (t->sp.n_logit_bias < 0 || (t->sp.n_logit_bias > 0 && !t->sp.logit_bias)) abort();
        for (int i = 0; i < t->sp.n_logit_bias; i++)
            if (t->sp.logit_bias[i].token < 0 || t->sp.logit_bias[i].token >= g_vocab) abort();
    } else {
        if (e.status != 400 && e.status != 404) abort();
        if (!e.message[0] || strchr(e.message, '\n')) abort();
    }
    text_request_free(t);
    cJSON_Delete(json);
    free(body);
    return 0;
}
